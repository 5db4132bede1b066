@_exported import BLE
