<?php
include 'db.php';

$user = find_user($_POST['user']);
if ($user && $user['hash'] === md5($_POST['password'])) {
    session_start();
    $_SESSION['uid'] = $user['id'];
}
