"""The run directory: the one interface the job, the language server and TensorBoard share.

Torch-free and standard-library only (the job imports it inside the user's interpreter):
the layout and every file name (``layout``), run ids and creation (``ids``), atomic JSON
writes and tolerant reads (``jsonio``), and the ``result.json`` types (``result``).
"""
