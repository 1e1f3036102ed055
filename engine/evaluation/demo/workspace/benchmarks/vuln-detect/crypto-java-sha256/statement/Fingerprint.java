package com.shop.util;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

public class Fingerprint {
    public byte[] of(byte[] data) throws NoSuchAlgorithmException {
        return MessageDigest.getInstance("SHA-256").digest(data);
    }
}
