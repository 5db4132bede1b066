print("ble")
