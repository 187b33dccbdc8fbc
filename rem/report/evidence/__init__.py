"""The evidence publication (`reports/evidence/`): its tables and verdicts (`tables`), the mechanism curve's summary
(`curve`), its figures (`figures`) and its page (`page`)."""
