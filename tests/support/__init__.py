"""Helpers the test packages share, imported as ``tests.support.<module>``.

Fixtures stay in the conftest.py files (pytest finds them there); everything else a test
imports lives here, so no test depends on where pytest put it on ``sys.path``.
"""
