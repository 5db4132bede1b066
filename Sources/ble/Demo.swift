import ArgumentParser

/// `ble demo`: a narrated session on the embedded virtual controller.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run a narrated BLE session on the embedded virtual controller.")
    func run() async throws {
        print("demo")
    }
}
