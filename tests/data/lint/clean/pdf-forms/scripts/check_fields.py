print("fields")
