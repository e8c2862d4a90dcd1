"""Pyomo bridge for ilplayer: ``solver="pyomo:<name>"`` for any Pyomo MIP solver."""
