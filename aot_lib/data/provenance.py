"""What a decoded split holds and where it came from.

**Provenance.** Every :class:`ImageData` carries a :class:`Provenance`: the dataset name as
requested, what was actually read (``reader``: ``"torchvision"`` for the original CIFAR pickles,
``"zip"`` for an ImageFolder zip, ``"folder"`` for an ImageFolder folder, ``"memory"`` for an
ImageData built by hand), the path, the split, the number of images, a short ``key`` for tables
and a human ``label`` for reports; :func:`describe_split` gives it without decoding anything. The offline copies are recognised by what was read (the zip's
file name *and* its structure: top folder, split folders, image format), never guessed from the
dataset name:

============================  ========================  ==============================================================
read                          ``key``                   ``label``
============================  ========================  ==============================================================
torchvision CIFAR-10          ``cifar10``               CIFAR-10 (official)
torchvision CIFAR-100         ``cifar100``              CIFAR-100 (official)
``cifar10-jpeg.zip``          ``cifar10_jpeg``          CIFAR-10 (official splits, JPEG q75 re-encoding)
``cifar100-png.zip``          ``cifar100_heldout``      CIFAR-100 (held-out split of the official train set: 40,000 train / 10,000 test)
``imagenette160-subset.zip``  ``imagenette160_subset``  Imagenette-160 subset (3,000 train / 1,000 val, 10 ImageNet classes)
any other zip / folder        its file / folder name    ImageFolder zip NAME / ImageFolder folder PATH (for a CIFAR name: "provenance unknown")
============================  ========================  ==============================================================

(The counts in the CIFAR-100 and Imagenette labels are those found in the zip.) A subset
(:meth:`ImageData.subset`) says so: ``key`` gains ``_sub<n>`` and ``label`` ends with
``subset: n of N images``. ``Provenance.as_dict()`` is what run files should record.
"""
from __future__ import annotations

import collections
import re
from dataclasses import dataclass

__all__ = ["Provenance", "OFFLINE_COPIES", "DISPLAY_NAMES", "slug"]


DISPLAY_NAMES = {"cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}


class Provenance(dict):
    """What an :class:`ImageData` holds and where it came from (see the module docstring).

    A plain ``dict`` (so a run file records it as is, ``json.dumps`` needs no help, and a checkpoint
    stores it as an ``OrderedDict`` that loads with ``weights_only=True``) whose keys are also
    attributes: ``p.label`` is ``p["label"]``.
    """

    FIELDS = ("dataset",  # the name asked for: cifar10 | cifar100 | imagefolder
              "reader",  # what was read: torchvision | zip | folder | memory
              "path",  # the file or folder read
              "split",  # the split asked for: train | test
              "split_dir",  # the folder the split was read from (train / test / val; "" for torchvision)
              "n_images",
              "key",  # short id for tables, e.g. cifar100_heldout
              "label",  # for reports, e.g. "CIFAR-100 (held-out split of the official train set: ...)"
              "image_size",  # stored side length in pixels (None: not decoded yet)
              "subset_of")  # size of the full split when this is a subset, else None

    def __init__(self, dataset: str, reader: str, path: str, split: str, split_dir: str, n_images: int, key: str,
                 label: str, image_size: int | None = None, subset_of: int | None = None):
        super().__init__(dataset=dataset, reader=reader, path=path, split=split, split_dir=split_dir,
                         n_images=n_images, key=key, label=label, image_size=image_size, subset_of=subset_of)

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __reduce__(self):  # pickled (torch.save) as an OrderedDict, which loads with weights_only=True
        return collections.OrderedDict, (list(self.items()),)

    def replace(self, **changes) -> "Provenance":
        return Provenance(**{**self, **changes})

    def as_dict(self) -> dict:
        return dict(self)


@dataclass(frozen=True)
class _Copy:
    """A known offline copy: recognised by its zip file name and its structure."""
    top: str  # the zip's single top folder
    ext: tuple[str, ...]  # image file extensions (lower case)
    splits: tuple[str, str]  # its train and test folder names
    key: str
    label: str  # formatted with train=, test= (image counts) and classes=


OFFLINE_COPIES = {
    "cifar10-jpeg.zip": _Copy("cifar10", (".jpg", ".jpeg"), ("train", "test"), "cifar10_jpeg",
                              "CIFAR-10 (official splits, JPEG q75 re-encoding)"),
    "cifar100-png.zip": _Copy("cifar100", (".png",), ("train", "test"), "cifar100_heldout",
                              "CIFAR-100 (held-out split of the official train set: {train:,} train / {test:,} test)"),
    "imagenette160-subset.zip": _Copy("imagenette160", (".jpeg", ".jpg"), ("train", "val"), "imagenette160_subset",
                                      "Imagenette-160 subset ({train:,} train / {test:,} val, {classes} ImageNet classes)"),
}


def slug(s: str) -> str:
    """A name as a key for tables and cache files: lower case, runs of other characters as one ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", s.lower()).strip("_") or "data"
