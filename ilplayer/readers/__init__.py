"""Readers of the models users already have: each turns one modelling tool's model into the
keyword arguments of [Program][ilplayer.Program] (its ``from_*`` constructors call them).

One module per tool; each imports its tool when called, so ``import ilplayer`` loads none of
them. A reader keeps the model's variable names and objective, keeps sparse rows sparse, and
refuses what a linear program cannot hold (quadratic or nonlinear terms, SOS, semi-continuous
variables, constraints added lazily) with an error naming it, before anything is solved.
"""
