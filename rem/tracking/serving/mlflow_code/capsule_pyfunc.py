"""The models-from-code file of every trial's MLflow Model: MLflow copies it into the model and runs it
when the model is loaded, instead of unpickling an object. The weights come from the model's `package` artifact, the
trial's weights-only model package; the input contract from the model's config (the MLmodel file).

It lives outside the package's modules (this folder has no __init__) because it needs MLflow at import time, while
every module of `rem` imports without it.
"""

import mlflow
import numpy as np
from mlflow.exceptions import MlflowException

from rem.tracking.mlflow_model import PACKAGE_KEY
from rem.tracking.serving.contract import InputContract
from rem.tracking.serving.inputs import BadImagesError
from rem.tracking.serving.predictor import CapsulePredictor


class CapsuleModel(mlflow.pyfunc.PythonModel):
    def load_context(self, context):
        self.predictor = CapsulePredictor.from_package_file(context.artifacts[PACKAGE_KEY],
                                                            InputContract.from_config(context.model_config))

    # np.ndarray: MLflow infers no schema from it (the logged signature stays the one in force) and stops asking for
    # type hints
    def predict(self, context, model_input: np.ndarray, params=None):
        try:
            return self.predictor.predict(model_input)
        except BadImagesError as err:  # INVALID_PARAMETER_VALUE: a 400 answer from `mlflow models serve`, not a 500
            raise MlflowException.invalid_parameter_value(str(err)) from None


mlflow.models.set_model(CapsuleModel())
