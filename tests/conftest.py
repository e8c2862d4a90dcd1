import os
import sys

# Tests see only the built-in backends unless a test installs a plugin itself.
os.environ.setdefault("ILPLAYER_DISABLE_PLUGIN_AUTOLOAD", "1")
sys.path.insert(0, os.path.dirname(__file__))
