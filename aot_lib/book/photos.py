"""Real photographs for pages that show images: scikit-image's samples, or a data set's first images when one is configured.

They ship with scikit-image (a ``[book]`` dependency), so a page that wants real images never
needs a download; a caption names where images came from, never a path of the machine.
"""
from __future__ import annotations

from typing import Iterable

from .pages import data_label

__all__ = ["PHOTO_CREDITS", "sample_photos", "example_images"]


#: The photographs bundled with scikit-image that :func:`sample_photos` uses, with their terms.
PHOTO_CREDITS = {
    "astronaut": "Eileen Collins, NASA (public domain)",
    "chelsea": "Chelsea the cat, Stéfan van der Walt (CC0)",
    "coffee": "a cup of coffee, Rachel Michetti (CC0)",
    "rocket": "a Falcon 9 launch, SpaceX (public domain)",
}


def sample_photos(size: int, names: Iterable[str] = tuple(PHOTO_CREDITS)):
    """Real photographs as a ``(N, 3, size, size)`` uint8 tensor: centre-cropped to a square
    and resized with antialiasing (``size=32`` is CIFAR-sized, ``160`` the ImageNet setting's
    stored size). They ship with scikit-image (a ``[book]`` dependency), so a page that wants
    real images never needs a download."""
    import torch
    from skimage import data as skdata

    out = []
    for name in names:
        img = torch.as_tensor(getattr(skdata, name)()).permute(2, 0, 1)[:3]
        h, w = img.shape[-2:]
        s = min(h, w)
        top, left = (h - s) // 2, (w - s) // 2
        img = img[:, top:top + s, left:left + s].float().unsqueeze(0)
        img = torch.nn.functional.interpolate(img, size=(size, size), mode="bicubic",
                                              antialias=True, align_corners=False)
        out.append(img.round().clamp(0, 255).to(torch.uint8)[0])
    return torch.stack(out)


def example_images(setting: str, n: int = 4):
    """``n`` images for showing the views of a setting, and where they come from.

    The first image of each of ``n`` classes: ``"cifar"`` from CIFAR-10's test split under
    ``AOT_DATA`` (or a torchvision download there), ``"imagenet"`` from the Imagenette
    subset's validation split (``imagenette160-subset.zip`` under ``AOT_DATA``). When the data set is
    not configured, the photographs of :func:`sample_photos` at the setting's stored size
    (32 or 160 px). Returns ``(images, source, missing)``: a uint8 tensor, a label for
    captions (never a path), and the data set's name when it was missing (else ``None``).
    """
    from ..data.datasets import DataError, load_split

    if setting not in ("cifar", "imagenet"):
        raise ValueError(f"setting must be 'cifar' or 'imagenet', got {setting!r}")
    cifar = setting == "cifar"
    try:
        if cifar:
            data = load_split("cifar10", "test")
        else:
            data = load_split("imagefolder", "test", root="imagenette160-subset.zip")
        first = [int((data.labels == k).nonzero()[0]) for k in range(n)]  # one per class
        images = data.images[first]
    except DataError:
        size = 32 if cifar else 160
        return (sample_photos(size, list(PHOTO_CREDITS)[:n]),
                f"sample photographs (scikit-image), resized to {size} px",
                "CIFAR-10" if cifar else "the Imagenette subset")
    what = "CIFAR-10, test images" if cifar else "Imagenette, validation images"
    label = data_label(data.provenance, what)
    return images, (label if label == what else f"{label}, "
                    f"{'test' if cifar else 'validation'} images"), None
