"""The linear probe's learning-rate grid: how its scores are keyed in ``probe.json``, which rates a probe tried, and
where its pick sits (torch-free: the trainer writes with it, :mod:`aot_lib.evidence` and the book read with it).

A probe records the validation top-1 of every ``(lr, weight decay)`` it trained as ``linear_val_top1`` under the key
``lr=<lr>,wd=<wd>`` (:func:`grid_key`). The rates a probe tried are those keys, not its configured ``probe.lr``:
``probe.lr_below`` / ``probe.lr_above`` extend the grid one rate at a time while the pick sits at its end
(:func:`next_rate`), so a probe may have tried more rates than it was configured with.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

_KEY = re.compile(r"lr=(?P<lr>[^,]+),wd=(?P<wd>.+)")


def grid_key(lr: float, weight_decay: float) -> str:
    """The key of one ``(lr, weight decay)`` score in ``linear_val_top1``."""
    return f"lr={lr:g},wd={weight_decay:g}"


def lr_scores(linear_val_top1: Mapping[str, float]) -> dict[float, float]:
    """``{lr: best validation top-1 over the weight decays tried at it}`` from a probe's ``linear_val_top1``.
    Refuses a key that is not :func:`grid_key`'s."""
    out: dict[float, float] = {}
    for key, score in linear_val_top1.items():
        m = _KEY.fullmatch(key)
        if m is None:
            raise ValueError(f"linear_val_top1 key {key!r} is not 'lr=<lr>,wd=<wd>' (aot_lib.training.probe's)")
        lr = float(m["lr"])
        out[lr] = max(out.get(lr, score), score)
    return out


def next_rate(tried: Sequence[float], pick: float, below: Sequence[float], above: Sequence[float]) -> float | None:
    """The rate to try next when a pick sits at an end of the rates ``tried``: the first of ``below`` under the
    lowest rate tried (pick at the bottom) or the first of ``above`` over the highest (pick at the top); None when
    the pick is inside, or that side has no rate left. A single rate is both ends: below is tried first."""
    lo, hi = min(tried), max(tried)
    if pick == lo:
        rest = [r for r in below if r < lo]
        if rest:
            return rest[0]
    if pick == hi:
        rest = [r for r in above if r > hi]
        if rest:
            return rest[0]
    return None


def check_extension(lrs: Sequence[float], below: Sequence[float], above: Sequence[float]) -> None:
    """Refuses ``probe.lr_below`` that is not strictly decreasing under every ``probe.lr``, and ``probe.lr_above``
    that is not strictly increasing over it (each is tried in its order, outward from the grid)."""
    for name, ext, outward, bound in (("lr_below", list(below), lambda a, b: a > b, min(lrs)),
                                      ("lr_above", list(above), lambda a, b: a < b, max(lrs))):
        chain = [bound, *ext]
        if not all(outward(a, b) for a, b in zip(chain, chain[1:])):
            word = "decreasing below" if name == "lr_below" else "increasing above"
            raise ValueError(f"probe.{name}={ext} must be strictly {word} the grid probe.lr={list(lrs)} "
                             f"(e.g. probe.{name}=[{bound / 3 if name == 'lr_below' else bound * 3:g}])")


def grid_pick(probe: Mapping) -> dict:
    """Where a recorded probe's pick sits among the rates it tried: ``{"lr", "grid", "at_top", "at_bottom",
    "edge_gain"}``. ``grid`` is the rates tried, ascending (the keys of ``linear_val_top1``; a probe of a single
    rate, which keeps no scores, gives its configured rate); ``edge_gain``: for a pick at an end of at least two
    rates, its validation top-1 minus that of the next rate inward (points), which says whether the accuracy was
    still rising where the grid stops; None inside. Refuses (ValueError, the caller names the file) a key that is
    not :func:`grid_key`'s and a pick the probe did not score."""
    lr = float(probe["linear_lr"])
    scores = lr_scores(probe.get("linear_val_top1") or {})
    grid = sorted(scores) or sorted(float(x) for x in ([probe["probe"]["lr"]] if isinstance(probe["probe"]["lr"],
                                                                                          (int, float))
                                                      else probe["probe"]["lr"]))
    if scores and lr not in scores:
        raise ValueError(f"the probe picked lr {lr:g}, which is not among the rates it scored {grid}")
    at_top, at_bottom = lr == grid[-1], lr == grid[0]
    gain = None
    if len(grid) > 1 and scores and (at_top or at_bottom):
        gain = scores[lr] - scores[grid[-2] if at_top else grid[1]]
    return {"lr": lr, "grid": grid, "at_top": at_top, "at_bottom": at_bottom, "edge_gain": gain}
