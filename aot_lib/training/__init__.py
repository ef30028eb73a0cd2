"""The trainer: config, run folders and checkpoints, the loop, optimiser schedules, monitors, evaluation,
and the three commands (``pretrain``, ``probe``, ``supervised``: finetune and distill).

May import ``models``, ``objectives``, ``theory``, ``data`` and the base modules; never ``book`` or ``cli``.
Its public API in one import is :mod:`aot_lib.train`. A new monitor goes in ``monitors``.
"""
