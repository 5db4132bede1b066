import BLEHost

// The escape hatch to the host stack under an adapter, for programs that build on the lower modules.
//
// `BLE` does not re-export `BLEHost`, so a program with only `import BLE` cannot name `HCIHost`, and nothing in
// `BLE`'s API hands one out: both doors below are written in terms of `HCIHost` itself. A program that wants the
// host (to send HCI commands, watch ACL buffers, open fixed L2CAP channels, share one host with its own code) says
// so by importing `BLEHost` by name:
//
//     import BLE
//     import BLEHost
//
//     let adapter = await Adapter(.virtual)
//     let host = HCIHost.owned(by: adapter)
//     let rssi = try await host.send(HCIReadRSSI(handle: handle)).rssi
//
// and, the other way, wraps a host it made itself in an adapter with `Adapter(host:)`.

extension HCIHost {
    /// The host stack `adapter` owns, for what the `BLE` module does not offer (HCI commands, ACL buffers, fixed
    /// L2CAP channels). What is done to it shows through the adapter and the centrals and peripheral managers that
    /// share it: powering it off powers the adapter off.
    ///
    /// Only a program that imports `BLEHost` by name can call this, since it has to name `HCIHost`.
    public static func owned(by adapter: Adapter) -> HCIHost { adapter.host }
}

extension Adapter {
    /// An adapter over a host the caller made and powered on (or will power on), so that a ``Central`` or
    /// ``PeripheralManager`` runs on it. The host stays shared: the caller may keep using it.
    ///
    /// Only a program that imports `BLEHost` by name has an `HCIHost` to pass.
    public convenience init(host: HCIHost) {
        self.init(wrapping: host)
    }
}
