// Common SIG-assigned UUIDs (Assigned Numbers, sections 3.4 services, 3.7 declarations, 3.8 characteristics and
// descriptors), with their names.

extension BluetoothUUID {
    /// Generic access (0x1800).
    public static let genericAccess = BluetoothUUID(0x1800)
    /// Generic attribute (0x1801).
    public static let genericAttribute = BluetoothUUID(0x1801)
    /// Device information (0x180A).
    public static let deviceInformation = BluetoothUUID(0x180A)
    /// Heart rate (0x180D).
    public static let heartRate = BluetoothUUID(0x180D)
    /// Battery (0x180F).
    public static let battery = BluetoothUUID(0x180F)
    /// Blood pressure (0x1810).
    public static let bloodPressure = BluetoothUUID(0x1810)
    /// Glucose (0x1808).
    public static let glucose = BluetoothUUID(0x1808)
    /// Weight scale (0x181D).
    public static let weightScale = BluetoothUUID(0x181D)
    /// Body composition (0x181B).
    public static let bodyComposition = BluetoothUUID(0x181B)
    /// Client characteristic configuration (0x2902).
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)

    static let assignedNames: [UInt16: String] = [
        0x1800: "Generic Access", 0x1801: "Generic Attribute", 0x1805: "Current Time", 0x1808: "Glucose",
        0x180A: "Device Information", 0x180D: "Heart Rate", 0x180F: "Battery", 0x1810: "Blood Pressure",
        0x1814: "Running Speed and Cadence", 0x1816: "Cycling Speed and Cadence", 0x181A: "Environmental Sensing",
        0x181B: "Body Composition", 0x181D: "Weight Scale",
        0x2800: "Primary Service", 0x2801: "Secondary Service", 0x2802: "Include", 0x2803: "Characteristic",
        0x2900: "Characteristic Extended Properties", 0x2901: "Characteristic User Description",
        0x2902: "Client Characteristic Configuration", 0x2903: "Server Characteristic Configuration",
        0x2904: "Characteristic Presentation Format",
        0x2A00: "Device Name", 0x2A01: "Appearance", 0x2A04: "Peripheral Preferred Connection Parameters",
        0x2A05: "Service Changed", 0x2A18: "Glucose Measurement", 0x2A19: "Battery Level", 0x2A23: "System ID",
        0x2A24: "Model Number String", 0x2A25: "Serial Number String", 0x2A26: "Firmware Revision String",
        0x2A27: "Hardware Revision String", 0x2A28: "Software Revision String", 0x2A29: "Manufacturer Name String",
        0x2A35: "Blood Pressure Measurement", 0x2A37: "Heart Rate Measurement", 0x2A38: "Body Sensor Location",
        0x2A39: "Heart Rate Control Point", 0x2A50: "PnP ID", 0x2A9C: "Body Composition Measurement",
        0x2A9D: "Weight Measurement", 0x2AA6: "Central Address Resolution", 0x2B29: "Client Supported Features",
        0x2B2A: "Database Hash",
    ]

    /// The SIG name of a well-known 16-bit UUID.
    public var name: String? { uint16.flatMap { Self.assignedNames[$0] } }
}
