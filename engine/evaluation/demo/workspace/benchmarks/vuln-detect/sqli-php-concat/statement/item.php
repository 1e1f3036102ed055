<?php
require_once 'config.php';

$db = new mysqli(DB_HOST, DB_USER, DB_PASS, DB_NAME);
$id = $_GET['id'];
$result = $db->query("SELECT name, price FROM items WHERE id = " . $id);
while ($row = $result->fetch_assoc()) {
    echo htmlspecialchars($row['name']) . "\n";
}
