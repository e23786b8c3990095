"""The README's "Adding a method" example, as a third-party package ships it."""

import numpy as np

from harness import Interval, Method, Param


class PredictionCorrelation(Method):
    """|corr(X_j, f(X))|^power over the explained rows: a cheap screen of the forest."""

    name = "prediction_correlation"
    family = "example"
    tasks = ("regression",)
    unit, explains = "absolute correlation", "the forest's prediction"
    parameters = {"power": Param(1, (Interval(int, 1, None, "left"),), "exponent")}

    def _explain(self, model, data, rng):
        prediction = model.predict(data.X)
        centred = data.X - data.X.mean(axis=0)
        score = centred.T @ (prediction - prediction.mean())
        score /= np.linalg.norm(centred, axis=0) * np.linalg.norm(prediction - prediction.mean())
        return np.abs(score) ** self.params["power"]
