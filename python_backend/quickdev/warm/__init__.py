"""Warm start: a process of the job's interpreter that has done a job's imports and forks
each job from there, so the job begins with torch (and the script's libraries) loaded.

Standard library only at import: the language server imports ``protocol`` from here and
must never load torch. ``zygote`` (in the warm process) and ``child`` (in a forked job)
run in the job's interpreter, started as ``python -m quickdev.warm FD``.
"""
