"""The horizon page (reports/evidence/horizon/): REM against +Q where training ran until its stopping rule."""
