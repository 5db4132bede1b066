import BLEWire

/// An address from its little-endian wire bytes (`"d6d5d4d3d2d1"` is D1:D2:D3:D4:D5:D6).
func wireAddress(_ hex: String) throws -> BluetoothAddress {
    try BluetoothAddress(bytes: [UInt8](hex: hex) ?? [])
}
