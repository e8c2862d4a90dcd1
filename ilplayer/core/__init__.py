"""The core of a solve: inputs checked and made host arrays, the records that cross the solver
contract, the decision pool, threads and silenced output."""
