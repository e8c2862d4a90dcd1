"""The ``ilplayer`` command line: ``solvers``, ``learn`` and ``fuzz`` here; more subcommands from
installed distributions through the ``ilplayer.commands`` entry points (the experiments' ``demo``,
``experiment``, ``report`` and ``bench``)."""
