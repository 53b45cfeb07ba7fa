# ruff: noqa: SIM115 - kept in the style of the public script it copies
# Poor man's configurator, as GPT training scripts have it: exec'd in train's globals.
# `python gpt_train.py config/quick.py --batch_size=4` overrides the globals.
import sys
from ast import literal_eval

for arg in sys.argv[1:]:
    if "=" not in arg:
        assert not arg.startswith("--")
        print(f"Overriding config with {arg}:")
        exec(open(arg).read())
    else:
        key, val = arg[2:].split("=")
        assert key in globals(), key
        try:
            attempt = literal_eval(val)
        except (SyntaxError, ValueError):
            attempt = val
        globals()[key] = attempt
