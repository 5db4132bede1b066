import Testing
import BLEProfiles

@Suite struct BLEProfilesModuleTests {
    @Test func reExportsTheBLEModule() {
        // The profile APIs take and return the BLE module's types; importing BLEProfiles alone must be enough.
        let uuid = BluetoothUUID(0x180F)
        #expect(uuid == BluetoothUUID(0x180F))
    }
}
