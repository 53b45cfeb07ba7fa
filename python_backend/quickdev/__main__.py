import sys

from quickdev.cli import main

sys.exit(main())
