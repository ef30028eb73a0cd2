"""Multi-crop views for LeJEPA, computed for a whole batch at once on the model's device.

:class:`BatchedMultiCrop` takes a uint8 batch ``(B, 3, H, W)`` and returns ``n_global`` views at
``global_size`` and ``n_local`` views at ``local_size``, each a normalised float batch. Every
random choice (crop box, flip, jitter factors, grayscale, solarize, blur) is drawn per image and
per view from one ``torch.Generator``, so a run is reproducible and resumable; the image work is
a few batched tensor ops per view (``affine_grid`` + ``grid_sample`` for random-resized-crop and
flip, broadcasting for colour, a grouped convolution for blur).

:func:`per_image_multicrop` is the same recipe with torchvision's per-image ``transforms.v2``:
the reference the batched version is benchmarked against (``benchmarks/bench_multicrop.py``).

Probabilities (``jitter_p`` ...) may be a number, or a list ``[first global, other globals,
locals]`` for DINO's asymmetric recipe (e.g. ``blur_p: [1.0, 0.1, 0.5]``, ``solarize_p: [0, 0.2, 0]``).

How the batched ops relate to torchvision's (what the tests in ``tests/test_augment.py`` check):

* **Colour jitter** (:func:`color_jitter`) is one per-image affine map: brightness, contrast and
  saturation are exactly torchvision's ``adjust_*`` while values stay inside [0, 1] (torchvision
  clamps after every step, the fused map once at the end), and the order is fixed (brightness,
  contrast, saturation, hue) where ``ColorJitter`` permutes it. The **hue** shift is a rotation
  about the gray axis of RGB by ``2 pi hue_factor``, in the direction of torchvision's
  ``adjust_hue`` (HSV): it maps the primaries and secondaries (red -> yellow -> green ...) exactly
  at multiples of 60 degrees and is within 1 degree of the best least-squares 3x3 matrix in between
  (HSV's hue hexagon is not a circle, so no linear map matches it exactly). Measured mean hue error
  against ``adjust_hue`` on uniform random images, pixels with chroma > 0.1: 1.7 degrees at
  ``hue_factor`` 0.1 (the earlier YIQ rotation, opposite in sign and larger: 73 degrees).
* **Grayscale** is ``0.299 R + 0.587 G + 0.114 B`` (torchvision: 0.2989 for red) in every channel;
  **solarize** inverts values >= 0.5, i.e. uint8 values >= 128 like ``RandomSolarize(128)``.
* **Random-resized crop** samples with ``grid_sample`` (bilinear), which cannot antialias. A crop
  shrunk by 2x or more is sampled from an area-downsampled copy of the image (a mipmap level
  ``2**floor(log2(shrink))``), so bilinear never shrinks by 2x or more; this approximates the
  antialiased resize of torchvision's ``RandomResizedCrop(antialias=True)`` and of evaluation
  (PIL bicubic when decoding, ``interpolate(antialias=True)`` for features). The CIFAR (32 -> 32 /
  16 px) and ImageNet (160 -> 128 / 64 px) recipes shrink by at most about 1.4x, so there it is plain
  bilinear.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .datasets import DATASET_STATS

__all__ = ["MultiCropConfig", "BatchedMultiCrop", "per_image_multicrop", "normalize", "prepare_images", "color_jitter", "hue_matrix",
           "CIFAR_MEAN", "CIFAR_STD"]

CIFAR_MEAN, CIFAR_STD = DATASET_STATS["cifar10"]  # kept importable from here (notebooks)
_LUMA = (0.299, 0.587, 0.114)


@dataclass
class MultiCropConfig:
    n_global: int = 2
    n_local: int = 6
    global_size: int = 32
    local_size: int = 16
    global_scale: tuple = (0.3, 1.0)
    local_scale: tuple = (0.05, 0.3)
    ratio: tuple = (3 / 4, 4 / 3)
    flip_p: float = 0.5
    jitter_p: float | list = 0.8
    brightness: float = 0.4
    contrast: float = 0.4
    saturation: float = 0.2
    hue: float = 0.1
    grayscale_p: float | list = 0.2
    solarize_p: float | list = 0.2
    blur_p: float | list = 0.0
    blur_sigma: tuple = (0.1, 2.0)
    mean: tuple = CIFAR_MEAN
    std: tuple = CIFAR_STD

    @classmethod
    def defaults_dict(cls) -> dict:
        """The view defaults as a config section (tuples as lists; ``mean``/``std`` left out: they follow
        the dataset, :func:`aot_lib.data.datasets.normalization_stats`). The single source of these defaults."""
        out = {}
        for f in dataclasses.fields(cls):
            if f.name not in ("mean", "std"):
                out[f.name] = list(f.default) if isinstance(f.default, tuple) else f.default
        return out

    @classmethod
    def from_config(cls, views: dict, mean=CIFAR_MEAN, std=CIFAR_STD) -> "MultiCropConfig":
        known = {k: v for k, v in views.items() if k in cls.__dataclass_fields__ and k not in ("mean", "std")}
        for k in ("global_scale", "local_scale", "ratio", "blur_sigma"):
            if k in known:
                known[k] = tuple(known[k])
        return cls(**known, mean=tuple(mean), std=tuple(std))

    def prob(self, name: str, view: int) -> float:
        p = getattr(self, name)
        if isinstance(p, (list, tuple)):
            if len(p) != 3:
                raise ValueError(f"{name} must be a number or [first global, other globals, locals], got {p}")
            return float(p[0] if view == 0 else p[1] if view < self.n_global else p[2])
        return float(p)


def normalize(x: torch.Tensor, mean, std) -> torch.Tensor:
    m = torch.tensor(mean, device=x.device, dtype=x.dtype).view(1, -1, 1, 1)
    s = torch.tensor(std, device=x.device, dtype=x.dtype).view(1, -1, 1, 1)
    return (x - m) / s


def prepare_images(images: torch.Tensor, size: int, mean, std) -> torch.Tensor:
    """``uint8 (B, 3, H, W)`` images -> normalised float images at ``size`` (antialiased bilinear resize when
    needed): the un-augmented input of the probes and the monitors' fixed batch."""
    x = images.float() / 255.0
    if x.shape[-1] != size or x.shape[-2] != size:
        x = F.interpolate(x, size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    return normalize(x, mean, std)


class _Draws:
    """Per-image random numbers for ``n_draw`` images of which this process keeps ``keep``.

    Under DDP every rank draws the parameters of the whole global batch from the same generator
    and keeps its own slice, so the views do not depend on how the batch is split over ranks.
    """

    def __init__(self, g: torch.Generator, n_draw: int, keep: slice):
        self.g, self.n, self.keep = g, n_draw, keep

    def rand(self) -> torch.Tensor:
        return torch.rand(self.n, generator=self.g)[self.keep]

    def uniform(self, lo: float, hi: float) -> torch.Tensor:
        return self.rand() * (hi - lo) + lo

    def bernoulli(self, p: float) -> torch.Tensor:
        return self.rand() < p


def _gray(x: torch.Tensor) -> torch.Tensor:
    w = torch.tensor(_LUMA, device=x.device, dtype=x.dtype).view(1, 3, 1, 1)
    return (x * w).sum(1, keepdim=True)


def hue_matrix(hue_factor: torch.Tensor) -> torch.Tensor:
    """Per-image 3x3 RGB matrices shifting hue by ``hue_factor`` turns, like torchvision's ``adjust_hue``.

    A rotation by ``2 pi hue_factor`` about the gray axis (1, 1, 1): positive turns red towards
    yellow and green, as HSV's hue does; gray stays gray and the channel mean is preserved.
    """
    angle = 2 * math.pi * hue_factor.float()
    cos, sin = torch.cos(angle).view(-1, 1, 1), torch.sin(angle).view(-1, 1, 1)
    k = torch.full((3, 3), 1 / 3)  # projection onto the gray axis
    cross = torch.tensor([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]]) / math.sqrt(3)  # axis x (.)
    return cos * (torch.eye(3) - k) + sin * cross + k


def color_jitter(x: torch.Tensor, brightness: torch.Tensor, contrast: torch.Tensor, saturation: torch.Tensor,
                 hue: torch.Tensor) -> torch.Tensor:
    """Brightness, contrast, saturation and hue (in that order) with per-image factors, as one affine map.

    ``x``: float batch ``(B, 3, H, W)`` in [0, 1]; the factors are ``(B,)`` tensors with torchvision's
    meaning (``hue`` in turns, ``[-0.5, 0.5]``). The four steps are linear (contrast is affine) in the
    pixel, so they are composed into one per-image 3x3 matrix and offset and applied with a single
    batched matmul; unlike torchvision's per-step clamping, values are clamped to [0, 1] once at the end.
    """
    b, dev, dt = x.shape[0], x.device, x.dtype
    bright, contrast, sat = (t.detach().float().cpu().view(b) for t in (brightness, contrast, saturation))
    luma = torch.tensor(_LUMA)
    ones_luma = torch.ones(3, 1) @ luma.view(1, 3)  # x -> gray(x) in every channel
    saturation_m = sat.view(b, 1, 1) * torch.eye(3) + (1 - sat).view(b, 1, 1) * ones_luma
    hue_sat = hue_matrix(hue.detach().float().cpu().view(b)) @ saturation_m
    matrix = hue_sat * (contrast * bright).view(b, 1, 1)
    # contrast blends with the mean gray of the brightness-adjusted image: an offset
    mean_gray = (x.mean((2, 3)) @ luma.to(dev, dt)).float().cpu() * bright
    offset = hue_sat @ torch.ones(b, 3, 1) * ((1 - contrast) * mean_gray).view(b, 1, 1)
    hw = x.shape[-2:]
    return torch.baddbmm(offset.to(dev, dt), matrix.to(dev, dt), x.reshape(b, 3, -1)).reshape(b, 3, *hw).clamp_(0, 1)


class BatchedMultiCrop(torch.nn.Module):
    """DINO/LeJEPA multi-crop on a whole uint8 batch; ``forward(images, generator) -> list of views``."""

    def __init__(self, cfg: MultiCropConfig | None = None, **kwargs):
        super().__init__()
        self.cfg = cfg or MultiCropConfig(**kwargs)

    @property
    def num_views(self) -> int:
        return self.cfg.n_global + self.cfg.n_local

    def _crop_flip(self, x: torch.Tensor, size: int, scale, r: _Draws) -> torch.Tensor:
        b = x.shape[0]
        area = r.uniform(*scale)
        ratio = torch.exp(r.uniform(math.log(self.cfg.ratio[0]), math.log(self.cfg.ratio[1])))
        w = torch.sqrt(area * ratio).clamp(max=1.0)  # crop width / image width
        h = torch.sqrt(area / ratio).clamp(max=1.0)
        cx = (r.rand() * 2 - 1) * (1 - w)  # centre in [-1, 1] coordinates
        cy = (r.rand() * 2 - 1) * (1 - h)
        flip = torch.where(r.bernoulli(self.cfg.flip_p), -1.0, 1.0)
        theta = torch.zeros(b, 2, 3)
        theta[:, 0, 0], theta[:, 0, 2] = w * flip, cx
        theta[:, 1, 1], theta[:, 1, 2] = h, cy
        theta = theta.to(device=x.device, dtype=x.dtype)
        grid = F.affine_grid(theta, [b, 3, size, size], align_corners=False)
        # source pixels per output pixel; a crop shrunk by 2x or more is sampled from a 2^L area-downsampled copy
        shrink = torch.maximum(w * x.shape[-1], h * x.shape[-2]) / size
        level = torch.floor(torch.log2(shrink) + 1e-4).clamp(min=0).long()  # 1e-4: an exact 2x is level 1
        if int(level.max()) == 0:
            return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
        out = x.new_empty(b, 3, size, size)
        src, idx = x, torch.arange(b)  # the images still in play at this level, downsampled L times
        for lv in range(int(level.max()) + 1):
            here = level[idx] == lv
            if here.any():
                sel = torch.nonzero(here).flatten()
                rows = idx[sel].to(x.device)
                out[rows] = F.grid_sample(src[sel.to(x.device)], grid[rows], mode="bilinear",
                                          padding_mode="reflection", align_corners=False)
            deeper = torch.nonzero(~here).flatten()
            if len(deeper) == 0:
                break
            src, idx = src[deeper.to(x.device)], idx[deeper]
            src = F.adaptive_avg_pool2d(src, (max(1, src.shape[-2] // 2), max(1, src.shape[-1] // 2)))
        return out

    def _colour(self, x: torch.Tensor, view: int, r: _Draws) -> torch.Tensor:
        """Colour jitter (:func:`color_jitter`), then grayscale, then solarize, each drawn per image."""
        c, b = self.cfg, x.shape[0]
        dev = x.device
        on = r.bernoulli(c.prob("jitter_p", view))

        def factors(strength):
            f = r.uniform(max(0.0, 1 - strength), 1 + strength)
            return torch.where(on, f, torch.ones(b))

        bright, contrast, sat = factors(c.brightness), factors(c.contrast), factors(c.saturation)
        hue = torch.where(on, r.uniform(-c.hue, c.hue), torch.zeros(b))
        y = color_jitter(x, bright, contrast, sat, hue)
        # grayscale and solarize touch only the images drawn for them (indexing beats a full-batch where)
        to_gray = torch.nonzero(r.bernoulli(c.prob("grayscale_p", view))).flatten().to(dev)
        if len(to_gray):
            y[to_gray] = _gray(y[to_gray]).expand(-1, 3, -1, -1)
        solar = torch.nonzero(r.bernoulli(c.prob("solarize_p", view))).flatten().to(dev)
        if len(solar):
            part = y[solar]
            y[solar] = torch.where(part >= 0.5, 1 - part, part)
        return y

    def _blur(self, x: torch.Tensor, view: int, r: _Draws) -> torch.Tensor:
        p = self.cfg.prob("blur_p", view)
        b = x.shape[0]
        on = r.bernoulli(p)
        sigma = r.uniform(*self.cfg.blur_sigma)
        if p <= 0 or not on.any():
            return x
        size = x.shape[-1]
        k = max(3, int(2 * round(0.1 * size) + 1))  # about a tenth of the view, odd (as in BYOL/DINO)
        t = torch.arange(k, dtype=torch.float32) - k // 2
        kern = torch.exp(-(t[None] ** 2) / (2 * sigma[:, None] ** 2))
        kern = kern / kern.sum(1, keepdim=True)
        kern = torch.where(on[:, None], kern, (t == 0).float()[None].expand(b, k))  # identity when off
        kern = kern.to(x.device, x.dtype).repeat_interleave(3, 0)  # (B*3, k)
        y = x.reshape(1, b * 3, size, size)
        y = F.pad(y, (k // 2, k // 2, k // 2, k // 2), mode="reflect")
        y = F.conv2d(y, kern.view(b * 3, 1, k, 1), groups=b * 3)
        y = F.conv2d(y, kern.view(b * 3, 1, 1, k), groups=b * 3)
        return y.reshape(b, 3, size, size)

    def forward(self, images: torch.Tensor, generator: torch.Generator | None = None,
                global_batch: int | None = None, offset: int = 0) -> list[torch.Tensor]:
        """Views of ``images``; with ``global_batch``, the random parameters are drawn for that many
        images and rows ``offset : offset + B`` are used (this rank's share of a DDP batch)."""
        if images.dtype != torch.uint8 or images.ndim != 4 or images.shape[1] != 3:
            raise ValueError(f"expected a uint8 batch (B, 3, H, W), got {images.dtype} {tuple(images.shape)}")
        g = generator if generator is not None else torch.Generator().manual_seed(int(torch.randint(2**62, ())))
        b = images.shape[0]
        r = _Draws(g, global_batch or b, slice(offset, offset + b))
        x = images.float() / 255.0
        c = self.cfg
        views = []
        for v in range(self.num_views):
            is_global = v < c.n_global
            size, scale = (c.global_size, c.global_scale) if is_global else (c.local_size, c.local_scale)
            y = self._crop_flip(x, size, scale, r)
            y = self._colour(y, v, r)
            y = self._blur(y, v, r)
            views.append(normalize(y, c.mean, c.std))
        return views


def per_image_multicrop(cfg: MultiCropConfig):
    """The same recipe with torchvision ``transforms.v2``, one image at a time (the reference)."""
    from torchvision.transforms import v2

    def pipeline(v: int):
        is_global = v < cfg.n_global
        size, scale = (cfg.global_size, cfg.global_scale) if is_global else (cfg.local_size, cfg.local_scale)
        steps = [
            v2.RandomResizedCrop(size, scale=tuple(scale), ratio=tuple(cfg.ratio), antialias=True),
            v2.RandomHorizontalFlip(cfg.flip_p),
            v2.RandomApply([v2.ColorJitter(cfg.brightness, cfg.contrast, cfg.saturation, cfg.hue)], p=cfg.prob("jitter_p", v)),
            v2.RandomGrayscale(cfg.prob("grayscale_p", v)),
            v2.RandomSolarize(128, p=cfg.prob("solarize_p", v)),
        ]
        if cfg.prob("blur_p", v) > 0:
            k = max(3, int(2 * round(0.1 * size) + 1))
            steps.append(v2.RandomApply([v2.GaussianBlur(k, sigma=tuple(cfg.blur_sigma))], p=cfg.prob("blur_p", v)))
        steps += [v2.ToDtype(torch.float32, scale=True), v2.Normalize(cfg.mean, cfg.std)]
        return v2.Compose(steps)

    pipes = [pipeline(v) for v in range(cfg.n_global + cfg.n_local)]

    def apply(images: torch.Tensor) -> list[torch.Tensor]:
        return [torch.stack([p(img) for img in images]) for p in pipes]

    return apply
