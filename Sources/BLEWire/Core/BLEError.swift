// The one error shape of the stack (``BLEFailure``, ``BLEErrorCode``, ``BLEErrorCategory`` and the ``BLEError`` view
// of any failure) lives in the BLEErrors module, which MQTT and ESPHomeAPI share; every module that imports BLEWire
// sees it as its own.
@_exported import BLEErrors
