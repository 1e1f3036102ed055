<?php
include 'db.php';

$email = $_POST['email'];
$rows = $conn->query("SELECT id, name FROM users WHERE email = '" . $email . "'");
echo $rows->num_rows > 0 ? 'found' : 'unknown';
