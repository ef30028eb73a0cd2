"""The training objectives and what they measure: SIGReg, the LeJEPA loss and projector, coding rates.

Imports only the base modules (``aot_lib.runtime``, ``aot_lib.distributed``); losses act on embeddings and
know no model family. A new loss goes here.
"""
