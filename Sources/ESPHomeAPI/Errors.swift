// The ESPHomeAPI module's errors have the stack's one shape (``BLEFailure`` of a code, with a category); a program
// that imports ESPHomeAPI alone sees it.
@_exported import BLEErrors
