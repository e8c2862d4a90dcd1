import sys

from ilplayer.cli.main import main

if __name__ == "__main__":  # process-pool workers import this module again: run nothing then
    sys.exit(main())
