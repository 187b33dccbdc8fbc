"""The models-from-code file MLflow runs to load every trial's MLflow Model, instead of unpickling; outside the
package's modules (no __init__) because it imports MLflow, which `rem` must not need."""

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

    # np.ndarray: MLflow then infers no schema (the logged signature stays in force)
    def predict(self, context, model_input: np.ndarray, params=None):
        try:
            return self.predictor.predict(model_input)
        except BadImagesError as err:  # INVALID_PARAMETER_VALUE: a 400 answer from `mlflow models serve`, not a 500
            raise MlflowException.invalid_parameter_value(str(err)) from None


mlflow.models.set_model(CapsuleModel())
