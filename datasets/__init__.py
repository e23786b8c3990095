"""Built-in dataset plugins: LED, XOR, scikit-learn bundled sets, Friedman #1, linear Gaussian."""
