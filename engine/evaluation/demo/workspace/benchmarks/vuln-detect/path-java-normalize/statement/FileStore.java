package com.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

public class FileStore {
    private final Path base = Paths.get("/var/store").toAbsolutePath().normalize();

    public byte[] read(String name) throws IOException {
        Path target = base.resolve(name).normalize();
        if (!target.startsWith(base)) {
            throw new SecurityException("outside the store");
        }
        return Files.readAllBytes(target);
    }
}
