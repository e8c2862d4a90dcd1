from ilplayer.testing import SolverConformance


class TestHighsConformance(SolverConformance):
    solver_name = "highs"
