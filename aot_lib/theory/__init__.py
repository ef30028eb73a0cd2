"""The paper's mathematics outside training: Theorem 1's closed forms (``theorem1``) and the ADMM
iterations without a network (``admm``).

May import ``models`` and ``objectives`` (and the base modules); never ``data``, ``training`` or ``book``.
"""
