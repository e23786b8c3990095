"""A third-party method as a plugin package would ship it (used by test_api)."""

from __future__ import annotations

import numpy as np

from harness.core.method import Method
from harness.core.types import Importances


class ConstantImportance(Method):
    name, scope, family = "constant_plugin", "global", "example"

    def _explain(self, model, data, rng):
        return Importances(np.ones(data.X.shape[1]), "global", data.feature_names, "one", "x")
