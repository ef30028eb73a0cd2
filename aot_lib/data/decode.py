"""Decoding a streamed image and fitting it into the square *working image* the views are cut from.

* The output appears atomically: it is written to ``DEST/.<split>.partial-<pid>`` and renamed.

**Streaming** (:class:`StreamingImages`, :func:`make_stream_loader`, :class:`StreamBatches`). Loader
worker processes decode each image with ``torchvision.io.decode_image`` (PIL as a fallback) and turn
it into one square uint8 *working image* of ``image_size`` pixels taken from the full-resolution
image; :class:`~aot_lib.data.augment.BatchedMultiCrop` then cuts every view from that working image on the
training device, with the colour, blur and solarize ops batched there as before. ``fit`` says how the
working image is taken:

* ``"crop"`` (default): the largest square, at a random position along the longer side (drawn from
  ``(seed, epoch, id)``), resized with antialiasing. The whole image is covered over the epochs (its
  borders included) and the aspect ratio is kept, so a view's aspect is BatchedMultiCrop's own
  ``ratio`` draw; a view's ``scale`` is relative to that square (on a 4:3 image, 3/4 of the image).
* ``"squash"``: the whole image resized to a square. A view's scale is then exactly its share of the
  image, but its aspect is stretched by the image's (4:3 images give views 4/3 wider than drawn).

Working size: a global view of scale ``s`` covers ``sqrt(s) * image_size`` pixels, so
"""
from __future__ import annotations

import io
import math
import warnings

import torch

__all__ = ["decode_rgb", "fit_square", "crop_position", "working_size_for", "FITS"]

FITS = ("crop", "squash")


# torchvision 0.29 deprecates its image decoders in favour of TorchCodec (a DeprecationWarning on every call,
# silenced below); they still work, and PIL is the fallback in decode_rgb. Moving to torchcodec's decoders is
# a change of decode_rgb and StreamBatches._decode only.


def decode_rgb(data, device: str | torch.device = "cpu") -> torch.Tensor:
    """An encoded image (bytes or a 1-D uint8 tensor) as a uint8 ``(3, H, W)`` tensor (PIL when torchvision cannot)."""
    from torchvision.io import ImageReadMode, decode_image

    t = data if torch.is_tensor(data) else torch.frombuffer(bytearray(data), dtype=torch.uint8)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # torchvision 0.29 points to TorchCodec; see the note above decode_rgb
            img = decode_image(t.cpu(), mode=ImageReadMode.RGB)
        if img.dtype != torch.uint8:
            raise RuntimeError(f"decoded as {img.dtype}")
    except RuntimeError:
        from PIL import Image

        pil = Image.open(io.BytesIO(t.cpu().numpy().tobytes())).convert("RGB")
        img = torch.frombuffer(bytearray(pil.tobytes()), dtype=torch.uint8).reshape(pil.size[1], pil.size[0], 3).permute(2, 0, 1)
    return img.to(device)


_M64 = (1 << 64) - 1


def _mix64(x: int) -> int:
    """splitmix64's finaliser: a cheap, well-mixed 64-bit hash."""
    x = (x + 0x9E3779B97F4A7C15) & _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def crop_position(seed: int, epoch: int, idx: int) -> float:
    """The working crop's position in [0, 1): a function of (seed, epoch, image id) only, so a resumed
    run, another worker count or another decode device gives the same crops."""
    return _mix64(_mix64(_mix64(int(seed) & _M64) ^ int(epoch)) ^ int(idx)) / 2.0**64


def fit_square(img: torch.Tensor, size: int, u: float = 0.5, fit: str = "crop") -> torch.Tensor:
    """A uint8 ``(3, size, size)`` working image from a full-resolution uint8 ``(3, H, W)`` image.

    ``fit="crop"``: the largest square at position ``u`` along the longer side (0: left/top, 1:
    right/bottom); ``"squash"``: the whole image. Resized with antialiasing (bilinear).
    """
    import torch.nn.functional as F

    if fit not in FITS:
        raise ValueError(f"fit must be one of {FITS}, got {fit!r}")
    h, w = img.shape[-2:]
    if fit == "crop" and h != w:
        s = min(h, w)
        off = min(int(u * (max(h, w) - s + 1)), max(h, w) - s)  # every offset equally likely
        img = img[:, off:off + s, :] if h > w else img[:, :, off:off + s]
    if img.shape[-2:] == (size, size):
        return img.contiguous()
    if img.device.type == "cpu":  # uint8 bilinear with antialiasing has a fast CPU kernel
        return F.interpolate(img[None], size=(size, size), mode="bilinear", antialias=True, align_corners=False)[0]
    out = F.interpolate(img[None].float(), size=(size, size), mode="bilinear", antialias=True, align_corners=False)[0]
    return out.round_().clamp_(0, 255).to(torch.uint8)


def working_size_for(global_size: int, global_scale=(0.25, 1.0), multiple: int = 8) -> int:
    """Working-image side so that no global view is upsampled: ``global_size / sqrt(min global scale)``,
    rounded up to a multiple of ``multiple`` (256 for 128 px views of scale >= 0.25)."""
    side = global_size / math.sqrt(min(global_scale))
    return int(math.ceil(side / multiple - 1e-9) * multiple)  # 1e-9: 256.0 stays 256, not 264
