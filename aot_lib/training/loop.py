"""The training loop every command shares: steps, checkpoints, resume, logging, and what to do when
something goes wrong.

A command (pretraining, fine-tuning, distillation) supplies a ``step_fn(step) -> dict``: it draws the
step's batch, runs the model and returns the loss to minimise under ``"loss"`` and anything else to log
(as tensors or numbers). :func:`fit` does the rest, the same way for every command:

* resumes from the run folder's ``last.ckpt`` (model, optimiser, schedule, step, random generator);
* stops with :class:`NonFiniteLossError` when the loss is NaN/inf (nothing is saved; the last good
  checkpoint stays), and skips a step whose gradient is not finite (the weights are not touched), up
  to ``optim.max_skipped_steps`` in a row;
* logs the gradient norm before clipping, the learning rate, images/s and the step's dict;
* saves every ``run.ckpt_every`` steps, at the end, after ``run.stop_after`` steps of this launch, and
  on Ctrl-C or SIGTERM (then raises ``KeyboardInterrupt``, :class:`RunStopped` for the signal); never a
  checkpoint with non-finite weights;
* says, after its first few steps, how long the run will take on this machine when that is over an hour
  (:func:`long_run_notice`): a paper-scale config on a laptop announces its days before they pass.
"""
from __future__ import annotations

import contextlib
import sys
import signal
import threading
import time
from time import perf_counter  # the long-run notice's clock (tests replace module time)
import warnings
from typing import Callable, Sequence

import torch
from torch.profiler import record_function

from .monitors import Monitor, StepContext
from .optim import grad_norm
from .runs import (CHECKPOINT_FORMAT, CheckpointError, RunFolder, RunStopped, load_checkpoint, merge_csv_logs,
                   save_checkpoint)

__all__ = ["fit", "NonFiniteLossError", "RunStopped", "make_loggers", "long_run_notice"]


class NonFiniteLossError(RuntimeError):
    """The loss (or the gradient, step after step) became NaN or infinite."""


@contextlib.contextmanager
def _stop_on_sigterm():
    """SIGTERM raises :class:`RunStopped` in the loop while it runs (main thread only: Python delivers signals
    there); the previous handler is put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise RunStopped("SIGTERM")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


#: A run estimated to take longer than this on this machine says so (:func:`long_run_notice`).
LONG_RUN_SECONDS = 3600.0
#: Steps timed for the estimate, after the first (which carries one-time compilation and warm-up).
ESTIMATE_STEPS = 3


def long_run_notice(kind: str, name: str, remaining_steps: int, step_seconds: float) -> str | None:
    """One line when ``remaining_steps`` at ``step_seconds`` each (measured) exceed :data:`LONG_RUN_SECONDS`,
    else None."""
    eta = remaining_steps * step_seconds
    if eta <= LONG_RUN_SECONDS:
        return None
    span = f"{eta / 3600:.1f} hours" if eta < 48 * 3600 else f"{eta / 86400:.1f} days"
    return (f"{kind} {name}: {remaining_steps:,} steps left at {step_seconds:.2f} s each (measured here) is about "
            f"{span} on this machine; Ctrl-C or SIGTERM stops it with a checkpoint (run again to resume), "
            "optim.max_steps or a configs/cpu/ config is shorter")


def make_loggers(directory):
    """Fabric's CSV logger (one version folder per launch; merged into ``metrics.csv``), and TensorBoard's
    when ``tensorboard`` is installed."""
    from lightning_fabric.loggers import CSVLogger

    loggers = [CSVLogger(str(directory), name="logs", flush_logs_every_n_steps=1)]
    try:
        import tensorboard  # noqa: F401
        from lightning_fabric.loggers import TensorBoardLogger

        loggers.append(TensorBoardLogger(str(directory), name="tensorboard"))
    except ImportError:
        pass
    return loggers


def _scalar(v) -> float:
    return float(v.detach().float().item()) if torch.is_tensor(v) else float(v)


def _is_scalar(v) -> bool:
    """Logged: numbers and one-element tensors; anything larger in the step dict is for the monitors."""
    return (torch.is_tensor(v) and v.numel() == 1) or (isinstance(v, (int, float)) and not isinstance(v, bool))


def fit(fabric, run: RunFolder, model, optimizer, scheduler, step_fn: Callable[[int], dict], *, total_steps: int,
        rng: torch.Generator, images_per_step: int, kind: str, desc: str = "", data_state=None,
        monitors: Sequence[Monitor] = ()) -> dict:
    """Run ``step_fn`` from the checkpointed step (or 0) to ``total_steps``; returns the last logged metrics
    with ``step`` and, when this launch stopped early (``run.stop_after``), ``paused=True``.

    ``data_state``: a data source with its own position (the litdata stream), with ``state_dict()``,
    ``load_state_dict()`` and ``position``; its state is taken after every completed step and checkpointed
    with the step, and restored on resume.

    ``monitors`` (:mod:`aot_lib.training.monitors`): each is called every ``monitor.every`` completed steps and at the
    last one with the step's dict and the model; what it returns is logged at that step, and the last values
    are returned under ``"monitors"``. They take no gradient and draw no random number, so the trajectory
    does not depend on them."""
    cfg = run.cfg
    rc, oc = cfg["run"], cfg["optim"]
    if total_steps < 1:
        raise ValueError(f"{kind}: the schedule has {total_steps} steps; raise the epochs or lower the batch size")
    start, skipped_total = 0, 0
    if rc["resume"] and run.ckpt.exists():
        if run.ckpt.is_file():
            # read here for one clear error if corrupt, before Fabric touches it; a checkpoint from before
            # kinds were recorded is a pretraining one
            saved_kind = load_checkpoint(run.ckpt).get("kind", "pretrain")
            if saved_kind != kind:
                raise CheckpointError(f"{run.ckpt} is a {saved_kind} checkpoint, not {kind}; use another run.name")
        try:
            rest = fabric.load(run.ckpt, {"model": model, "optimizer": optimizer}, weights_only=True)
        except RuntimeError as e:
            raise CheckpointError(f"{run.ckpt} does not fit this model ({str(e).splitlines()[0]}); "
                                  "resume with the config it was made with, or start a new run") from None
        scheduler.load_state_dict(rest["scheduler"])
        rng.set_state(rest["rng"])
        if data_state is not None:
            if "data_stream" not in rest:
                raise CheckpointError(f"{run.ckpt} has no data-stream position; resume with the data it was made with")
            data_state.load_state_dict(rest["data_stream"])
        start, skipped_total = int(rest["step"]), int(rest.get("skipped_steps", 0))
        if start >= total_steps:
            fabric.print(f"{run.path} already finished at step {start}; nothing to do")
            return {"step": start, "already_finished": True, **rest.get("metrics", {})}
        fabric.print(f"resumed from {run.ckpt} at step {start}")
    run.update(total_steps=total_steps, resumed_from=start)

    def checkpoint(step: int, rng_state: torch.Tensor, metrics: dict) -> None:
        state = {"format": CHECKPOINT_FORMAT, "kind": kind, "model": model, "optimizer": optimizer,
                 "scheduler": scheduler.state_dict(), "step": step, "total_steps": total_steps, "rng": rng_state,
                 "config": cfg, "metrics": metrics, "skipped_steps": skipped_total}
        if data_state is not None:
            state["data_stream"] = data_snapshot
        save_checkpoint(fabric, run.ckpt, state)
        run.update(step=step, last_metrics=metrics, skipped_steps=skipped_total)

    from tqdm.auto import tqdm

    bar = tqdm(total=total_steps, initial=start, desc=desc or f"{kind} {rc['name']}", dynamic_ncols=True,
               disable=not (fabric.is_global_zero and rc["progress"]))
    model.train()
    last: dict = {}
    monitored: dict = {}
    tick, seen, consecutive = time.time(), 0, 0
    timed: list[float] = []  # the first steps' durations, for the long-run notice
    done = start  # steps completed and applied
    updating = False
    rng_state = rng.get_state()
    data_snapshot = data_state.state_dict() if data_state is not None else None
    with _stop_on_sigterm():  # SIGTERM is taken as Ctrl-C is: a checkpoint, then "stopped"
        try:
            for step in range(start, total_steps):
                began = perf_counter()
                with record_function("step_fn"):  # named scopes: benchmarks/bench_trainer.py profiles the step by them
                    out = step_fn(step)
                loss = out["loss"]
                loss_value = fabric.all_reduce(loss.detach().float(), reduce_op="mean")
                if not torch.isfinite(loss_value):
                    where = (f"the last good checkpoint {run.ckpt} is untouched" if run.ckpt.exists()
                             else "no checkpoint had been written yet")
                    raise NonFiniteLossError(
                        f"the {kind} loss became {loss_value.item()} at step {step}; {where}. Lower optim.lr, set "
                        "optim.grad_clip, or use fabric.precision=32-true, then run again")
                with record_function("backward"):
                    fabric.backward(loss)
                gnorm = grad_norm(model)
                finite = fabric.all_reduce(torch.isfinite(gnorm).float(), reduce_op="min").item() == 1.0
                updating = True
                if finite:
                    if oc["grad_clip"]:
                        fabric.clip_gradients(model, optimizer, max_norm=oc["grad_clip"])
                    with record_function("optimizer"):
                        optimizer.step()
                    consecutive = 0
                else:  # skip: the weights stay finite; the step (and its batch) is consumed
                    consecutive += 1
                    skipped_total += 1
                optimizer.zero_grad(set_to_none=True)
                lr = optimizer.param_groups[0]["lr"]  # the lr this step used, logged beside its loss
                with warnings.catch_warnings():  # a skipped first step is not the misuse this warns about
                    warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)`")
                    scheduler.step()
                done = step + 1
                rng_state = rng.get_state()  # the generator as it is after step `done`
                if data_state is not None:  # likewise the stream: a Ctrl-C in the next step must not skip a batch
                    data_snapshot = data_state.state_dict()
                updating = False
                if consecutive > oc["max_skipped_steps"]:
                    raise NonFiniteLossError(
                        f"the {kind} gradient was not finite for {consecutive} steps in a row (up to step {step}); "
                        "the weights were not updated by them. Lower optim.lr, set optim.grad_clip, or use "
                        "fabric.precision=32-true, then run again")
                seen += images_per_step
                if done % rc["log_every"] == 0 or done == total_steps:
                    now = time.time()
                    last = {k: _scalar(v) for k, v in out.items() if k != "loss" and _is_scalar(v)}
                    last.update(loss=loss_value.item(), lr=lr, grad_norm=gnorm.item(),
                                skipped_steps=skipped_total, images_per_s=seen / max(now - tick, 1e-9))
                    tick, seen = now, 0
                    # wall_s: the run's wall seconds so far, every launch's (its time-to-accuracy clock)
                    fabric.log_dict({**last, "wall_s": run.elapsed_s()}, step=done)
                    bar.set_postfix({k: f"{last[k]:.4g}" for k in ("loss", "lr") if k in last}, refresh=False)
                due = [m for m in monitors if done % m.every == 0 or done == total_steps]
                if due:
                    with record_function("monitors"):
                        ctx = StepContext(done, out, getattr(model, "module", model))
                        measured = {k: v for m in due for k, v in m(ctx).items()}
                    fabric.log_dict({**measured, "wall_s": run.elapsed_s()}, step=done)
                    monitored.update(measured)
                bar.update()
                if len(timed) <= ESTIMATE_STEPS:
                    timed.append(perf_counter() - began)
                    if len(timed) == ESTIMATE_STEPS + 1 and fabric.is_global_zero:
                        notice = long_run_notice(kind, rc["name"], total_steps - done, sum(timed[1:]) / ESTIMATE_STEPS)
                        if notice:
                            tqdm.write(notice, file=sys.stderr)  # beside the bar, shown or not
                stop = rc["stop_after"] is not None and done - start >= rc["stop_after"]
                if done % rc["ckpt_every"] == 0 or done == total_steps or stop:
                    checkpoint(done, rng_state, last)
                if stop and done < total_steps:
                    fabric.print(f"stopped after {rc['stop_after']} steps at step {done}; run again to resume")
                    run.update(status=f"paused at step {done}")
                    return {"step": done, "paused": True, **last}
        except KeyboardInterrupt as e:
            # Ctrl-C reads "interrupted", SIGTERM "stopped ... (SIGTERM)": either resumes the same way
            said = f"stopped at step {done} (SIGTERM)" if isinstance(e, RunStopped) else f"interrupted at step {done}"
            if not updating and done > start:  # weights and generator are consistent with step `done`
                checkpoint(done, rng_state, last)
                run.update(status=said)
                fabric.print(f"\n{said.split(' at ')[0]}: checkpoint saved at step {done}; run the same command again to resume")
            else:
                run.update(status=said)
                fabric.print(f"\n{said}; the last checkpoint is kept; run again to resume")
            raise
        finally:
            bar.close()
            for logger in fabric.loggers:
                logger.finalize("success")
            if fabric.is_global_zero:
                merge_csv_logs(run.path)
    return {"step": total_steps, **last, **({"monitors": monitored} if monitored else {})}
