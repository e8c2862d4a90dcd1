"""Learning constraints from (c, y) observations: the settings, the loops (CombOptNet's,
ILP-Loss'), restarts, selection, polish and the starts read off the data."""
