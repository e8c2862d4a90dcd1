"""A plugin whose hook name is misspelt: loading it must warn, not crash."""

from ilplayer.plugin_api import hookimpl


@hookimpl
def ilplayer_register_solver(register):  # missing trailing "s"
    raise AssertionError("never called")
