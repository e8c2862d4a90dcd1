"""Gurobi backend for ilplayer (``solver="gurobi"``)."""
