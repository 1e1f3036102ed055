<?php
include 'db.php';

$hash = password_hash($_POST['password'], PASSWORD_DEFAULT);
save_user($_POST['user'], $hash);
