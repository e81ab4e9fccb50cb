"""Pure detectors over text: corrections, prompt-injection screening, secrets and personal data, named periods,
quantities. No I/O and no imports from the store, the reflection engine or governance: everything here is a
function of its arguments, so it is tested without any service."""
