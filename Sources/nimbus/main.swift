print("nimbus")
