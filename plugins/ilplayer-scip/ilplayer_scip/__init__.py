"""SCIP backend for ilplayer (``solver="scip"``)."""
