import sys

from distdx.cli import main

sys.exit(main())
