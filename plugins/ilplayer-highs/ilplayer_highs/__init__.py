"""HiGHS backend for ilplayer (``solver="highs"``)."""
