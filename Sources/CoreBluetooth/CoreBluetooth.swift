// `import CoreBluetooth` on Linux.
//
// Apple's CoreBluetooth framework does not exist on Linux; this module takes its name so that iOS and macOS
// Bluetooth code builds unchanged against swift-ble: it re-exports CoreBluetoothCompat (`CBCentralManager`,
// `CBPeripheral`, `CBPeripheralManager`, `CBUUID` and the rest, on swift-ble's own host stack) and, as Apple's
// framework does, Foundation (code that imports only CoreBluetooth uses `Data`, `UUID`, `NSObject` and
// `DispatchQueue`).
//
// The package declares this module only on Linux (see `Package.swift`): on Apple's platforms `import CoreBluetooth`
// is Apple's framework, never this module.
@_exported import CoreBluetoothCompat
@_exported import Foundation
