package com.media;

import java.io.IOException;

public class Converter {
    public Process toPng(String input) throws IOException {
        ProcessBuilder pb = new ProcessBuilder("convert", input, "out.png");
        pb.redirectErrorStream(true);
        return pb.start();
    }
}
