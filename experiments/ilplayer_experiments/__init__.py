"""The paper's demonstrations: datasets and training loops."""
