import sys

from ilplayer.cli import main

sys.exit(main())
