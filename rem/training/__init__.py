"""Training one trial: the epoch loop (`loop.train`), what its steps share (`run.TrainingRun`, whose
`final_evaluation` ends a trial), the checkpoint folder and its format (`checkpoint`, the one owner), the validation
loss REM's threshold search reads (`validation_loss`) and the per-step loss bookkeeping (`step_losses`)."""
