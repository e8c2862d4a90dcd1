"""OR-Tools CP-SAT backend for ilplayer (``solver="cpsat"``)."""
