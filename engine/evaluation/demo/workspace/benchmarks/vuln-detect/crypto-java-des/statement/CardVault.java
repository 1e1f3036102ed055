package com.pay.vault;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import javax.crypto.Cipher;
import javax.crypto.spec.SecretKeySpec;

public class CardVault {
    private final SecretKeySpec key;

    public CardVault(byte[] raw) {
        this.key = new SecretKeySpec(raw, "DES");
    }

    public String seal(String cardNumber) throws Exception {
        Cipher cipher = Cipher.getInstance("DES/ECB/PKCS5Padding");
        cipher.init(Cipher.ENCRYPT_MODE, key);
        return Base64.getEncoder().encodeToString(cipher.doFinal(cardNumber.getBytes(StandardCharsets.UTF_8)));
    }
}
