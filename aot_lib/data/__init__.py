"""Images in: in-memory data sets (``datasets``), their augmentation on the device (``augment``) and
streamed ImageNet-scale data (``streaming``).

Imports only the base modules (``aot_lib.files``); knows no model, loss or trainer.
"""
